# Summarises one kernel's `go test -v` output of the VM suite (scripts/test):
# one line per package, with its test results (subtests included). Guest
# tests run inside TestGuestPackages/<package> and are counted for
# "<package> (guest)". "missing" counts the tests skipped because the
# kernel lacks a module they need (vmtest.SkipMissingPrefix).
# Variables: label, version.
BEGIN { prefix = "!!! SKIPPED ON THIS KERNEL:" }
function result(line) { match(line, /--- (PASS|FAIL|SKIP)/); return substr(line, RSTART + 4, 4) }
/^=== RUN   TestGuestPackages\// { g = $3; sub(/^TestGuestPackages\//, "", g); next }
/guest: *--- (PASS|FAIL|SKIP): / { tot[g " (guest)", result($0)]++; seen[g " (guest)"] = 1; next }
index($0, prefix) { if (index($0, "guest:")) miss[g " (guest)"]++; else hmiss++; next }
/^ *--- (PASS|FAIL|SKIP): / { cnt[result($0)]++; next }
/^(ok|FAIL)[ \t]+github\.com\// {
	p = $2; sub(/^github\.com\/go-mdraid\/mdraid\/?/, "", p); if (p == "") p = "."
	for (r in cnt) tot[p, r] += cnt[r]
	delete cnt
	seen[p] = 1; miss[p] += hmiss; hmiss = 0
	if ($1 == "FAIL") failed[p] = 1
}
END {
	for (p in seen) {
		f = tot[p, "FAIL"] + 0
		if (failed[p] && f == 0) f = "build/run"
		printf "%-14s %-24s %-28s %6d %9s %7d %7d\n", label, version, p, tot[p, "PASS"], f, tot[p, "SKIP"], miss[p]
	}
}
