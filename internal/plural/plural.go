// Package plural writes counts in messages: "1 time", "2 times",
// "1 entry", "3 entries". Every count message of hostprep goes through N,
// so the singular and the plural never disagree with the number.
package plural

import (
	"fmt"
	"strings"
)

// irregular are the nouns whose plural is not noun+"s" (or +"es" after
// s, x, z, ch, sh, or y -> ies after a consonant) or that do not change.
var irregular = map[string]string{
	"process": "processes",
	"is":      "are",
	"was":     "were",
	"has":     "have",
	"ms":      "ms",
	"s":       "s",
	"KiB":     "KiB",
	"MiB":     "MiB",
	"GiB":     "GiB",
}

// N returns n and noun, singular for n == 1 and plural otherwise (0 is
// plural: "0 changes"): N(1, "time") == "1 time", N(2, "time") ==
// "2 times", N(2, "entry") == "2 entries". The noun is given in the
// singular; a multi-word noun is pluralised at its last word
// (N(2, "failed check") == "2 failed checks"), so words after the noun go
// outside: N(n, "step")+" skipped". Units ("ms", "s", "KiB") and the verbs
// "is", "was", "has" (Noun(n, "was")) are known too.
func N[T Integer](n T, noun string) string {
	return fmt.Sprintf("%d %s", n, Noun(n, noun))
}

// Integer is any integer type a count comes in.
type Integer interface {
	~int | ~int8 | ~int16 | ~int32 | ~int64 | ~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64
}

// Noun returns noun in the singular for n == 1 and in the plural
// otherwise, without the number: for messages that put the count
// elsewhere ("3 keys (2 of them ...)").
func Noun[T Integer](n T, noun string) string {
	if n == 1 {
		return noun
	}
	head, last := "", noun
	if i := strings.LastIndexByte(noun, ' '); i >= 0 {
		head, last = noun[:i+1], noun[i+1:]
	}
	return head + pluralOf(last)
}

func pluralOf(w string) string {
	if p, ok := irregular[w]; ok {
		return p
	}
	switch {
	case w == "":
		return w
	case strings.HasSuffix(w, "s"), strings.HasSuffix(w, "x"), strings.HasSuffix(w, "z"),
		strings.HasSuffix(w, "ch"), strings.HasSuffix(w, "sh"):
		return w + "es"
	case strings.HasSuffix(w, "y") && len(w) > 1 && !strings.ContainsRune("aeiou", rune(w[len(w)-2])):
		return w[:len(w)-1] + "ies"
	}
	return w + "s"
}

// Them is the pronoun that stands for n things after their count: "it"
// for 1, else "them" ("1 change pending; tune plan lists it").
func Them[T Integer](n T) string {
	if n == 1 {
		return "it"
	}
	return "them"
}

// List returns the numbers of v, comma-separated, and noun after them:
// singular only when v is the one number 1 (List([]int{1}, "worker") ==
// "1 worker", List([]int{8, 16}, "worker") == "8, 16 workers"). For
// messages that name several counts at once ("the steps at 8, 16
// workers"); an empty v gives just the plural noun.
func List[T Integer](v []T, noun string) string {
	if len(v) == 1 {
		return N(v[0], noun)
	}
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = fmt.Sprint(n)
	}
	return strings.TrimLeft(strings.Join(s, ", ")+" "+Noun(2, noun), " ")
}
