# Prints, from one kernel's `go test -v` output of the VM suite
# (scripts/test), each failed test's name and its own output (from its
# "=== RUN" line, at most `lines` lines, default 60), so that the cause
# of a red run is at the end of CI's output, which is what survives
# truncation. A test with a failed subtest is only named (the subtest
# shows the output); so are the host tests that wrap a failed guest
# package (TestGuestPackages/...). Variables: label, lines.
BEGIN { if (lines == "") lines = 60 }
{ text[NR] = $0 }
/=== RUN   / { n = $0; sub(/.*=== RUN   /, "", n); sub(/[ \t]+$/, "", n); run[n] = NR; next }
/--- FAIL: / {
	n = $0; sub(/.*--- FAIL: /, "", n); sub(/ \([0-9.]+s\)$/, "", n)
	if (!(n in failed)) order[++nf] = n
	failed[n] = 1
}
END {
	for (k = 1; k <= nf; k++) {
		n = order[k]
		parent = 0
		for (m in failed) if (index(m, n "/") == 1) parent = 1
		if (parent || n ~ /^TestGuestPackages/ || !(n in run)) { print label ": FAIL " n; continue }
		print label ": FAIL " n ", its output:"
		shown = 0
		for (i = run[n] + 1; i <= NR && shown < lines; i++) {
			if (match(text[i], /=== RUN   /)) {
				m = substr(text[i], RSTART + 10); sub(/[ \t]+$/, "", m)
				if (index(m, n "/") != 1) break
			}
			if (index(text[i], "--- FAIL: " n " (")) break
			print "    | " text[i]; shown++
		}
	}
}
