package crd_test

import (
	"github.com/fluxcd/pkg/apis/meta"

	"sort"
	"strings"
)

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

func splitDots(s string) []string { return strings.Split(s, ".") }

func metaRef(name string) meta.LocalObjectReference { return meta.LocalObjectReference{Name: name} }
