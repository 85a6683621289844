package md

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/go-mdraid/mdraid/internal/escape"
)

// ErrUnsafeName is matched by the error SafeName returns for a name it
// refuses; the message quotes the name, escaped, and says why.
var ErrUnsafeName = errors.New("md: array name cannot be used as a device name")

// unsafeNameError says why a superblock name was refused. It matches
// ErrUnsafeName.
type unsafeNameError struct {
	Name   string // the name as read, raw
	Reason string
}

// Error quotes the name escaped.
func (e *unsafeNameError) Error() string {
	return fmt.Sprintf("%v: %q %s", ErrUnsafeName, escape.Text(e.Name), e.Reason)
}

// Is reports whether target is ErrUnsafeName.
func (e *unsafeNameError) Is(target error) bool { return target == ErrUnsafeName }

// SafeName is the one rule that turns an array name read from a
// superblock (Superblock.Name, or FullName where the homehost is kept)
// into the name of its /dev/md/NAME link and the value of MD_NAME in udev
// export output. The name comes from the disk, so anyone who plugs one in
// chooses it; the result is safe as one path element and as a udev value.
//
// It follows mdadm where mdadm has a rule (as read in
// md-raid-utilities/mdadm: mdopen.c create_mddev, super1.c
// export_examine_super1):
//   - the name ends at the first newline (mdadm cuts MD_NAME there; a
//     NUL already ends set_name);
//   - '/' becomes '-', and space and tab become '_' (mdadm's link names);
//   - an empty name is no name (mdadm makes no link and prints no
//     MD_NAME).
//
// and refuses, with an error matching ErrUnsafeName, what
// mdadm would pass through but a path or a udev rule must not see: the
// names "." and "..", a leading '-' (taken for an option), bytes that are
// not UTF-8, and any rune other than a letter, a digit or one of
// "._-:+@". Quotes, '$', '\', '=', control characters and format
// characters are all refused, never rewritten, so a refused name cannot
// turn into another array's name.
//
// A result is not unique: two arrays may carry the same name, and a
// caller creating links must refuse (or suffix, as mdadm does) a name a
// link already uses for another array, never replace that link.
func SafeName(name string) (string, error) {
	refuse := func(reason string) (string, error) {
		return "", &unsafeNameError{Name: name, Reason: reason}
	}
	s, _, _ := strings.Cut(name, "\n")
	s, _, _ = strings.Cut(s, "\x00")
	if s == "" {
		return refuse("is empty")
	}
	if !utf8.ValidString(s) {
		return refuse("is not valid UTF-8")
	}
	s = strings.Map(func(r rune) rune {
		switch r {
		case '/':
			return '-'
		case ' ', '\t':
			return '_'
		}
		return r
	}, s)
	switch {
	case s == "." || s == "..":
		return refuse("is a directory name")
	case s[0] == '-':
		return refuse("begins with '-'")
	}
	for _, r := range s {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !strings.ContainsRune("._-:+@", r) {
			return refuse(fmt.Sprintf("contains %s", escape.Text(string(r))))
		}
	}
	return s, nil
}
