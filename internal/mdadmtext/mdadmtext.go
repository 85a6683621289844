// Package mdadmtext parses the text that mdadm prints, so that tests can
// cross-check our results against mdadm on the same kernel. It is a test
// helper: nothing in the library runs mdadm.
package mdadmtext

import (
	"regexp"
	"strconv"
	"strings"
)

// Detail is `mdadm --detail` output.
type Detail struct {
	// Fields are the "Key : Value" lines ("State", "Raid Devices",
	// "Active Devices", "UUID", ...), values trimmed.
	Fields map[string]string
	// Rows are the device table.
	Rows []Row
}

// Row is one line of the device table of mdadm --detail.
type Row struct {
	// Slot is the RaidDevice column: a number, or "-".
	Slot string
	// State is the state words: "active sync", "spare rebuilding",
	// "faulty", "removed", "spare", or "" for an inactive array.
	State string
	// Dev is the device path, or "" for a removed slot.
	Dev string
}

var field = regexp.MustCompile(`^\s*([A-Za-z][A-Za-z /]*[A-Za-z]) : (.*)$`)

// ParseDetail parses mdadm --detail output.
func ParseDetail(text string) Detail {
	d := Detail{Fields: map[string]string{}}
	inTable := false
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) >= 4 && f[0] == "Number" && f[1] == "Major" {
			inTable = true
			continue
		}
		if inTable {
			if len(f) < 4 {
				continue
			}
			r := Row{Slot: f[3]}
			rest := f[4:]
			if len(rest) > 0 && strings.HasPrefix(rest[len(rest)-1], "/dev/") {
				r.Dev = rest[len(rest)-1]
				rest = rest[:len(rest)-1]
			}
			r.State = strings.Join(rest, " ")
			d.Rows = append(d.Rows, r)
			continue
		}
		if m := field.FindStringSubmatch(line); m != nil {
			d.Fields[m[1]] = strings.TrimSpace(m[2])
		}
	}
	return d
}

// Row returns the table row of the device at path dev.
func (d Detail) Row(dev string) (Row, bool) {
	for _, r := range d.Rows {
		if r.Dev == dev {
			return r, true
		}
	}
	return Row{}, false
}

// Int returns a numeric field, or -1 when it is missing or not a number.
func (d Detail) Int(key string) int {
	n, err := strconv.Atoi(d.Fields[key])
	if err != nil {
		return -1
	}
	return n
}

// UUID returns the UUID field without colons or the "(local to host …)"
// note: 32 hex digits.
func (d Detail) UUID() string {
	u, _, _ := strings.Cut(d.Fields["UUID"], " ")
	return strings.ReplaceAll(u, ":", "")
}

// Health is what mdadm's State line says about an array, in the words of
// md.Availability: "inactive", "failed", "degraded" or "online".
func (d Detail) Health() string {
	s := d.Fields["State"]
	switch {
	case strings.Contains(s, "inactive"):
		return "inactive"
	case strings.Contains(s, "FAILED"), strings.Contains(s, "broken"):
		return "failed"
	case strings.Contains(s, "degraded"):
		return "degraded"
	}
	return "online"
}

// TestExit is what mdadm --detail --test returns for this array: 0
// healthy, 1 degraded, 2 failed or not running.
func (d Detail) TestExit() int {
	switch d.Health() {
	case "inactive", "failed":
		return 2
	case "degraded":
		return 1
	}
	return 0
}
