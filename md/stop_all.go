package md

import (
	"context"
	"fmt"
	"regexp"
	"sort"
)

// mdPartition matches the kernel name of an md array's partition
// ("md127p1"), naming the array.
var mdPartition = regexp.MustCompile(`^(md[0-9]+|md_d[0-9]+)p[0-9]+$`)

// StopOrder lists every array that runs or has members, in the order to
// stop them all (mdadm --stop --scan): an array before every array it is
// stacked on, that is whose md device, or a partition of it, is one of
// its members; otherwise by kernel name. md devices with no array (clear
// and no members) are left out.
func (m *Manager) StopOrder(ctx context.Context) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	names, err := m.fs.Arrays()
	if err != nil {
		return nil, fmt.Errorf("md: listing the arrays: %w", err)
	}
	var arrays []string
	live := map[string]bool{}
	for _, n := range names {
		ok, err := m.alive(n)
		if err != nil {
			return nil, fmt.Errorf("md: %s: %w", n, err)
		}
		if ok {
			arrays = append(arrays, n)
			live[n] = true
		}
	}
	sort.Strings(arrays)
	// above[x] counts the arrays stacked on x, which go first.
	above := map[string]int{}
	below := map[string][]string{}
	for _, n := range arrays {
		a, err := m.fs.Array(n)
		if err != nil {
			return nil, fmt.Errorf("md: %s: %w", n, err)
		}
		mems, err := a.Members()
		if err != nil {
			return nil, fmt.Errorf("md: the members of %s: %w", n, err)
		}
		for _, mem := range mems {
			x := mem.Name()
			if p := mdPartition.FindStringSubmatch(x); p != nil {
				x = p[1]
			}
			if live[x] && x != n {
				above[x]++
				below[n] = append(below[n], x)
			}
		}
	}
	var order []string
	done := map[string]bool{}
	for len(order) < len(arrays) {
		progress := false
		for _, n := range arrays {
			if done[n] || above[n] > 0 {
				continue
			}
			done[n] = true
			order = append(order, n)
			progress = true
			for _, x := range below[n] {
				above[x]--
			}
		}
		if !progress { // a loop cannot be built, but a tree read twice could
			for _, n := range arrays {
				if !done[n] {
					done[n] = true
					order = append(order, n)
				}
			}
		}
	}
	return order, nil
}
