package v1

import (
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// FormatPrice writes a price in USD per hour as status.price holds it: a
// plain decimal with at most six places and no trailing zeros ("0.0342").
func FormatPrice(usd float64) string {
	s := strconv.FormatFloat(max(usd, 0), 'f', 6, 64)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// PriceUSD is the claim's price in USD per hour; ok is false while it is
// not known (the instance has not launched) or not a number. Claims
// written before status.price was a decimal hold a Quantity ("34200u");
// those are read too.
func (s *NodeClaimStatus) PriceUSD() (float64, bool) {
	if s.Price == "" {
		return 0, false
	}
	if f, err := strconv.ParseFloat(s.Price, 64); err == nil {
		return f, true
	}
	q, err := resource.ParseQuantity(s.Price)
	if err != nil {
		return 0, false
	}
	return q.AsApproximateFloat64(), true
}
