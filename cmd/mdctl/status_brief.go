package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/go-mdraid/mdraid/internal/escape"
	"github.com/go-mdraid/mdraid/md"
)

// renderBrief prints mdadm.conf ARRAY lines, as mdadm --detail --scan
// (Detail.c, brief): "ARRAY PATH metadata=V [spares=N] [name=NAME]
// UUID=U", INACTIVE-ARRAY for an array that is assembled but not
// running. PATH is the array's /dev/md/NAME (the map file's entry, else
// a link; see md.DetailExport.DevName) or /dev/mdN. name= is printed as
// mdadm 4.2 to 4.5 print it (4.6 leaves it out); every value is one md
// has checked for udev (md.UdevSafe), so it is also one mdadm.conf word.
func renderBrief(ctx context.Context, w, errw io.Writer, m *md.Manager, r *md.Report) error {
	for i := range r.Arrays {
		a := &r.Arrays[i]
		e, err := m.Export(ctx, a.Device)
		if err != nil {
			fmt.Fprintf(errw, "mdctl: %s: %s\n", escape.Text(a.Device), escape.Lines(err.Error()))
			continue
		}
		fmt.Fprintln(w, briefLine(a, e))
	}
	return nil
}

// briefLine is one ARRAY line.
func briefLine(a *md.Array, e *md.DetailExport) string {
	var b strings.Builder
	if a.Availability == md.Inactive {
		b.WriteString("INACTIVE-ARRAY ")
	} else {
		b.WriteString("ARRAY ")
	}
	if e.DevName != "" {
		b.WriteString("/dev/md/" + e.DevName)
	} else {
		b.WriteString("/dev/" + e.Device)
	}
	if e.Metadata != "" {
		b.WriteString(" metadata=" + e.Metadata)
	}
	if n := len(a.Spares); n > 0 && a.RaidDisks > 0 {
		fmt.Fprintf(&b, " spares=%d", n)
	}
	if e.Name != "" {
		b.WriteString(" name=" + e.Name)
	}
	if e.UUID != "" {
		b.WriteString(" UUID=" + e.UUID)
	}
	return escape.Text(b.String())
}
