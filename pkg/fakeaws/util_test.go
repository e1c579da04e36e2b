package fakeaws_test

import (
	"encoding/base64"
	"errors"
	"sort"
)

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func sortedValues(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = m[k]
	}
	return out
}

func fleetIDs(launches [][]string) []string {
	var out []string
	for _, l := range launches {
		out = append(out, l...)
	}
	return out
}

func sortedKeysOf(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// asErr is errors.As for tests that check the modelled error type as well as the code.
func asErr[T error](err error, target *T) bool { return errors.As(err, target) }
