package fakeaws

import "testing"

func TestWildcard(t *testing.T) {
	tests := []struct {
		pat, s string
		want   bool
	}{
		{"abc", "abc", true},
		{"abc", "abd", false},
		{"nodesmith/*", "nodesmith/default/a", true},
		{"*", "", true},
		{"a*c", "abbbc", true},
		{"a*c", "abbbd", false},
		{"a?c", "abc", true},
		{"a?c", "ac", false},
		{`a\*c`, "a*c", true},
		{`a\*c`, "abc", false},
		{"amazon-eks-node-al2023-x86_64-*", "amazon-eks-node-al2023-x86_64-standard-1.37-v1", true},
		{"*-arm64-*", "amazon-eks-node-al2023-x86_64-standard", false},
	}
	for _, tt := range tests {
		if got := wildcard(tt.pat, tt.s); got != tt.want {
			t.Errorf("wildcard(%q, %q) = %v, want %v", tt.pat, tt.s, got, tt.want)
		}
	}
}
