package v1

import (
	"strconv"
)

// PriceUSD is the claim's price in USD per hour; ok is false while it is
// not known (the instance has not launched).
func (s *NodeClaimStatus) PriceUSD() (float64, bool) {
	if s.Price == nil {
		return 0, false
	}
	f, err := strconv.ParseFloat(s.Price.AsDec().String(), 64)
	if err != nil {
		return s.Price.AsApproximateFloat64(), true
	}
	return f, true
}
