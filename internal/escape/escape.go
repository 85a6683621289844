// Package escape makes text that comes from a disk safe to show: names,
// homehosts and serials are chosen by whoever wrote the disk (or its
// firmware), and must never reach a terminal, a log line or a label
// unescaped.
//
// It sits below every other package of the module (it imports only the
// standard library), so that md, its satellites and cmd/mdctl all use the
// same rule.
package escape

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Text returns s with everything that is not printable escaped, visibly
// and reversibly:
//
//   - a byte that is not part of valid UTF-8 becomes \xHH;
//   - an ASCII control character (including tab, newline, ESC and DEL)
//     becomes \xHH;
//   - any other rune that is not printable (C1 controls, format
//     characters such as bidirectional overrides, line and paragraph
//     separators, spaces other than U+0020) becomes \uHHHH or \UHHHHHHHH;
//   - a backslash becomes \\, so that an escaped string cannot pass for
//     another one.
//
// Everything else, including the ASCII space and printable non-ASCII
// letters, is kept. The result is valid UTF-8, has no control characters,
// and Text is injective: distinct inputs give distinct outputs. A string
// that needs no escaping is returned as is.
func Text(s string) string {
	if !needsEscape(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			hexByte(&b, s[i])
		case r == '\\':
			b.WriteString(`\\`)
		case r < utf8.RuneSelf && !printable(r):
			hexByte(&b, byte(r))
		case !printable(r):
			q := strconv.QuoteRuneToASCII(r) // '\u202e' or '\U000e0001'
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// Lines is Text applied to each line of s: newlines are kept, everything
// else is escaped as Text does. It is meant for messages that are made of
// lines on purpose and may quote values from a disk.
func Lines(s string) string {
	if !needsEscape(strings.ReplaceAll(s, "\n", "")) {
		return s
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = Text(l)
	}
	return strings.Join(lines, "\n")
}

// Safe reports whether s can be shown as it is: valid UTF-8 with only
// printable runes (no control characters, no newline). Text's result
// always is.
func Safe(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !printable(r) {
			return false
		}
	}
	return true
}

// printable is the set of runes Text keeps: unicode.IsPrint, which admits
// letters, marks, numbers, punctuation, symbols and the ASCII space only.
func printable(r rune) bool { return unicode.IsPrint(r) }

func needsEscape(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '\\' {
			return true
		}
	}
	return false
}

func hexByte(b *strings.Builder, c byte) {
	const digits = "0123456789abcdef"
	b.WriteString(`\x`)
	b.WriteByte(digits[c>>4])
	b.WriteByte(digits[c&0xf])
}
