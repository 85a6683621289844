# Lists the tests that one kernel's VM suite (scripts/test, go test -v
# output) skipped because the kernel lacks a module they need
# (vmtest.SkipMissingPrefix), one a line: "<package> <test>", or
# "<package> (guest) <test>" for a test run in the guest, as
# scripts/vm-summary.awk names the packages. scripts/test fails when a
# test is listed for every kernel of the matrix: it tests nothing
# anywhere.
BEGIN { prefix = "!!! SKIPPED ON THIS KERNEL:" }
function last(s,    n, f) { n = split(s, f, /[ \t]+/); return f[n] }
/^=== RUN   TestGuestPackages\// { g = $3; sub(/^TestGuestPackages\//, "", g) }
match($0, /guest: *=== (RUN|CONT|NAME|PAUSE) +[^ \t]+/) { gcur = last(substr($0, RSTART, RLENGTH)); next }
/^=== (RUN|CONT|NAME|PAUSE) / { hcur = $3; next }
index($0, prefix) {
	if (index($0, "guest:")) print g " (guest) " gcur
	else held[++nh] = hcur
	next
}
/^(ok|FAIL)[ \t]+github\.com\// {
	p = $2; sub(/^github\.com\/go-mdraid\/mdraid\/?/, "", p); if (p == "") p = "."
	for (i = 1; i <= nh; i++) print p " " held[i]
	nh = 0
}
