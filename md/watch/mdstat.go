package watch

import (
	"bytes"
	"strings"
)

// mdstatArrays splits the text of /proc/mdstat by array: a line
// "md127 : active raid1 vdb[1] vda[0]" starts an array, named by its
// first word, and the indented lines after it (size, sync, bitmap)
// belong to it. The "Personalities" line, the blank lines between arrays
// and "unused devices" belong to none. Nothing is parsed beyond that: the
// text is only compared with the previous one (mdstatChanged), to learn
// which array a notification of /proc/mdstat was about.
//
// What moves without such a notification is left out, so that it does
// not name an array that did not change: the bitmap line (its page
// counts follow the writes) and the progress of a sync ("[==>...]
// recovery = 18.7% (...) finish=... speed=..." is kept as "recovery":
// the start and end of a sync are notified, its progress is notified on
// the array's own sync_completed).
func mdstatArrays(text []byte) map[string]string {
	out := map[string]string{}
	cur := ""
	for line := range bytes.Lines(text) {
		l := strings.TrimRight(string(line), "\n")
		switch {
		case l == "":
			cur = ""
		case l[0] == ' ' || l[0] == '\t':
			if cur == "" {
				break
			}
			t := strings.TrimSpace(l)
			if strings.HasPrefix(t, "bitmap:") {
				break
			}
			if before, after, ok := strings.Cut(t, " = "); ok && strings.Contains(after, "%") {
				if f := strings.Fields(before); len(f) > 0 {
					t = "sync " + f[len(f)-1]
				}
			}
			out[cur] += "\n" + t
		default:
			name, _, found := strings.Cut(l, " : ")
			cur = ""
			if found && name != "Personalities" && !strings.ContainsAny(name, " \t") {
				cur = name
				out[cur] += l
			}
		}
	}
	return out
}

// mdstatChanged returns the arrays whose lines differ between two texts
// of /proc/mdstat split by mdstatArrays, those that came and those that
// went included.
func mdstatChanged(prev, cur map[string]string) []string {
	var out []string
	for n, t := range cur {
		if p, ok := prev[n]; !ok || p != t {
			out = append(out, n)
		}
	}
	for n := range prev {
		if _, ok := cur[n]; !ok {
			out = append(out, n)
		}
	}
	return out
}
