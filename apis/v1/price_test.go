package v1

import "testing"

func TestPrice(t *testing.T) {
	tests := []struct {
		usd  float64
		want string
	}{
		{0.0342, "0.0342"},
		{0.136, "0.136"},
		{1, "1"},
		{0, "0"},
		{0.00000049, "0"},
		{12.3456789, "12.345679"},
		{0.1 + 0.2, "0.3"},
	}
	for _, tt := range tests {
		got := FormatPrice(tt.usd)
		if got != tt.want {
			t.Errorf("FormatPrice(%v) = %q, want %q", tt.usd, got, tt.want)
		}
		s := NodeClaimStatus{Price: got}
		if back, ok := s.PriceUSD(); !ok || FormatPrice(back) != got {
			t.Errorf("PriceUSD(%q) = %v, %v", got, back, ok)
		}
	}
	old := NodeClaimStatus{Price: "34200u"} // a Quantity, as claims stored it before
	if p, ok := old.PriceUSD(); !ok || FormatPrice(p) != "0.0342" {
		t.Errorf("PriceUSD(34200u) = %v, %v", p, ok)
	}
	for _, bad := range []string{"", "cheap"} {
		s := NodeClaimStatus{Price: bad}
		if _, ok := s.PriceUSD(); ok {
			t.Errorf("PriceUSD(%q) ok", bad)
		}
	}
}
