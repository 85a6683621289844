//go:build !unix

package md

import "github.com/go-mdraid/mdraid/sysfs"

func devNumOf(string) (sysfs.DevNum, bool) { return sysfs.DevNum{}, false }
