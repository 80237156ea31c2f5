package crd_test

import (
	"sort"
	"strings"
)

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

func splitDots(s string) []string { return strings.Split(s, ".") }
