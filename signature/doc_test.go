package signature

import (
	"go/parser"
	"go/token"
	"strconv"
	"strings"
	"testing"
	"unicode"

	qt "github.com/frankban/quicktest"
)

// TestDocNamesTable: the package doc names every entry of the magic
// table by its What, and quotes every printable magic, so the list a
// reader sees cannot drift from the one Scan uses.
func TestDocNamesTable(t *testing.T) {
	c := qt.New(t)
	f, err := parser.ParseFile(token.NewFileSet(), "doc.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	c.Assert(err, qt.IsNil)
	c.Assert(f.Doc, qt.IsNotNil)
	// Join the comment's lines, so a name wrapped over two lines counts.
	doc := strings.Join(strings.Fields(f.Doc.Text()), " ")
	printable := func(s string) bool {
		for _, r := range s {
			if r > unicode.MaxASCII || !unicode.IsPrint(r) {
				return false
			}
		}
		return true
	}
	for _, m := range magics {
		c.Check(strings.Contains(doc, m.what), qt.IsTrue, qt.Commentf("doc does not name %q", m.what))
		q := strconv.Quote(m.b)
		if printable(m.b) {
			// The doc's quotes keep runs of spaces ("FAT12   "): look
			// for the quoted magic in the raw text.
			c.Check(strings.Contains(f.Doc.Text(), q), qt.IsTrue, qt.Commentf("doc does not quote %s magic %s", m.what, q))
		} else if len(m.b) >= 4 && printable(m.b[:4]) {
			c.Check(strings.Contains(f.Doc.Text(), q), qt.IsTrue, qt.Commentf("doc does not quote %s magic %s", m.what, q))
		}
	}
	for _, name := range []string{"MBR boot signature", "protective MBR (GPT)", "ZFS uberblock", "md superblock 0.90"} {
		c.Check(strings.Contains(doc, name), qt.IsTrue, qt.Commentf("doc does not name %q", name))
	}
}
