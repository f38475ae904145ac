// Package editdist measures how far apart two names are, for the "did you
// mean" in error messages (a mistyped key, a mistyped table name).
package editdist

// Distance is the Levenshtein distance of a and b, in bytes (the names it
// compares are ASCII).
func Distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Closest returns the candidate nearest to s ("" when there is none); of
// equally near ones, the first.
func Closest(s string, candidates []string) string {
	best, bestD := "", -1
	for _, c := range candidates {
		if d := Distance(s, c); bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	return best
}
