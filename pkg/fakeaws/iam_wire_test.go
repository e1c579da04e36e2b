package fakeaws

import "testing"

func TestIsIAMRequest(t *testing.T) {
	tests := []struct {
		body string
		want bool
	}{
		{"Action=GetInstanceProfile&InstanceProfileName=p&Version=2010-05-08", true},
		{"Version=2010-05-08&Action=GetInstanceProfile", true},
		{"Action=DescribeSubnets&Version=2016-11-15", false},
		// Only the whole field counts, not a longer name or value around it.
		{"Action=X&XVersion=2010-05-08", false},
		{"Action=X&Version=2010-05-08X", false},
		// A value that spells the field is URL-encoded and cannot match.
		{"Action=CreateTags&Tag.1.Value=Version%3D2010-05-08&Version=2016-11-15", false},
		{"Action=X&XVersion=2010-05-08&Version=2010-05-08", true},
		{"", false},
	}
	for _, tt := range tests {
		if got := isIAMRequest([]byte(tt.body)); got != tt.want {
			t.Errorf("isIAMRequest(%q) = %v, want %v", tt.body, got, tt.want)
		}
	}
}
