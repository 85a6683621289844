//go:build !linux

package md

import "errors"

func mknodBlock(string, uint32, uint32) error { return errors.New("mknod: Linux only in these tests") }
