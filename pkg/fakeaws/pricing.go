package fakeaws

import (
	"crypto/sha256"
	"encoding/base32"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
)

const (
	pricingTargetPrefix = "AWSPriceListService."
	pricingContentType  = "application/x-amz-json-1.1"
)

// product is one Price List product: its attributes and hourly USD price.
type product struct {
	attrs map[string]string
	price float64
}

// priceList builds the region's EC2 compute products from the world's
// on-demand pools: for each type, the Linux shared-tenancy price the pools
// charge (their lowest, when zones differ), plus the products real
// GetProducts answers also hold — Windows and RHEL, dedicated tenancy and
// unused capacity reservations — at other prices, so a client that forgets
// a filter reads the wrong price.
func (w *World) priceList() []product {
	lowest := map[string]float64{}
	for _, p := range w.Pools() {
		if p.CapacityType != CapacityOnDemand {
			continue
		}
		if cur, ok := lowest[p.InstanceType]; !ok || p.Price < cur {
			lowest[p.InstanceType] = p.Price
		}
	}
	names := make([]string, 0, len(lowest))
	for n := range lowest {
		names = append(names, n)
	}
	sort.Strings(names)
	region := w.opts.Region
	var out []product
	for _, n := range names {
		base := map[string]string{
			"instanceType": n, "regionCode": region, "location": regionLocation(region), "operatingSystem": "Linux",
			"tenancy": "Shared", "preInstalledSw": "NA", "capacitystatus": "Used", "licenseModel": "No License required",
			"usagetype": "BoxUsage:" + n, "servicecode": "AmazonEC2", "productFamily": "Compute Instance",
		}
		variant := func(price float64, kv ...string) product {
			a := make(map[string]string, len(base))
			for k, v := range base {
				a[k] = v
			}
			for i := 0; i+1 < len(kv); i += 2 {
				a[kv[i]] = kv[i+1]
			}
			return product{attrs: a, price: roundPrice(price)}
		}
		p := lowest[n]
		out = append(out,
			variant(p),
			variant(p, "capacitystatus", "UnusedCapacityReservation", "usagetype", "UnusedBox:"+n),
			variant(p*1.1, "tenancy", "Dedicated", "usagetype", "DedicatedUsage:"+n),
			variant(p+0.046, "operatingSystem", "Windows", "usagetype", "BoxUsage:"+n),
			variant(p+0.06, "operatingSystem", "RHEL", "licenseModel", "No License required"),
		)
	}
	return out
}

// regionLocation is the Price List's long name of a region (a few are known;
// others get a placeholder, which only the location filter would notice).
func regionLocation(region string) string {
	switch region {
	case "us-east-1":
		return "US East (N. Virginia)"
	case "us-east-2":
		return "US East (Ohio)"
	case "us-west-2":
		return "US West (Oregon)"
	case "eu-west-1":
		return "EU (Ireland)"
	case "eu-central-1":
		return "EU (Frankfurt)"
	}
	return "Region " + region
}

// document renders a product as GetProducts sends it: a JSON document in a string.
func (p product) document(publication string) string {
	sum := sha256.Sum256([]byte(fmt.Sprint(p.attrs)))
	sku := strings.TrimRight(base32.StdEncoding.EncodeToString(sum[:10]), "=")
	const term, rate = "JRTCKXETXF", "6YS6EN2CT7"
	doc := map[string]any{
		"product":     map[string]any{"productFamily": p.attrs["productFamily"], "attributes": p.attrs, "sku": sku},
		"serviceCode": "AmazonEC2",
		"terms": map[string]any{"OnDemand": map[string]any{
			sku + "." + term: map[string]any{
				"offerTermCode": term, "sku": sku, "effectiveDate": publication, "termAttributes": map[string]any{},
				"priceDimensions": map[string]any{sku + "." + term + "." + rate: map[string]any{
					"rateCode": sku + "." + term + "." + rate, "unit": "Hrs", "beginRange": "0", "endRange": "Inf", "appliesTo": []string{},
					"description":  fmt.Sprintf("$%s per On Demand %s %s Instance Hour", strconv.FormatFloat(p.price, 'f', -1, 64), p.attrs["operatingSystem"], p.attrs["instanceType"]),
					"pricePerUnit": map[string]string{"USD": strconv.FormatFloat(p.price, 'f', 10, 64)},
				}},
			},
		}},
		"version":         "20261101000000",
		"publicationDate": publication,
	}
	b, _ := json.Marshal(doc)
	return string(b)
}

// servePricing answers the Price List Query API (AWS JSON 1.1,
// AWSPriceListService.*): GetProducts for AmazonEC2 with TERM_MATCH, EQUALS,
// CONTAINS, ANY_OF and NONE_OF filters, paginated by NextToken (MaxResults
// at most 100). Calls are counted under "pricing:<Operation>".
func (s *Server) servePricing(rw http.ResponseWriter, op string, body []byte) {
	rid := s.requestID()
	key := "pricing:" + op
	if op != "GetProducts" {
		s.w.count(key)
		writeJSONError(rw, pricingContentType, rid, 400, "UnknownOperationException", "operation "+op+" is not simulated")
		return
	}
	if fault := s.admit(key); fault != nil {
		if fault.Code == "RequestLimitExceeded" {
			// The Price List model's ThrottlingException is HTTP 429.
			writeJSONError(rw, pricingContentType, rid, 429, "ThrottlingException", "Rate exceeded")
		} else {
			writeJSONError(rw, pricingContentType, rid, 500, "InternalErrorException", fault.Message)
		}
		return
	}
	var in struct {
		ServiceCode   string
		FormatVersion string
		NextToken     string
		MaxResults    *int
		Filters       []struct{ Type, Field, Value string }
	}
	if err := json.Unmarshal(body, &in); err != nil {
		writeJSONError(rw, pricingContentType, rid, 400, "InvalidParameterException", "malformed request: "+err.Error())
		return
	}
	if in.ServiceCode != "AmazonEC2" {
		writeJSONError(rw, pricingContentType, rid, 400, "NotFoundException", fmt.Sprintf("Service %q is not simulated: only AmazonEC2", in.ServiceCode))
		return
	}
	max := 100
	if in.MaxResults != nil {
		if *in.MaxResults < 1 || *in.MaxResults > 100 {
			writeJSONError(rw, pricingContentType, rid, 400, "InvalidParameterException", "MaxResults must be between 1 and 100")
			return
		}
		max = *in.MaxResults
	}
	var matched []product
	for _, p := range s.w.priceList() {
		ok := true
		for _, f := range in.Filters {
			m, err := filterMatches(f.Type, p.attrs[f.Field], f.Value)
			if err != nil {
				writeJSONError(rw, pricingContentType, rid, 400, "InvalidParameterException", err.Error())
				return
			}
			ok = ok && m
		}
		if ok {
			matched = append(matched, p)
		}
	}
	from := 0
	if in.NextToken != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(in.NextToken, "pl-"))
		if err != nil || n < 0 || n > len(matched) {
			writeJSONError(rw, pricingContentType, rid, 400, "InvalidNextTokenException", "The pagination token is invalid.")
			return
		}
		from = n
	}
	to := min(from+max, len(matched))
	publication := s.w.Now().UTC().Format("2006-01-02T15:04:05Z")
	list := make([]string, 0, to-from)
	for _, p := range matched[from:to] {
		list = append(list, p.document(publication))
	}
	out := map[string]any{"FormatVersion": "aws_v1", "PriceList": list}
	if to < len(matched) {
		out["NextToken"] = "pl-" + strconv.Itoa(to)
	}
	writeJSONBody(rw, pricingContentType, rid, out)
}

// filterMatches applies one GetProducts filter to an attribute value (""
// when the product lacks the attribute).
func filterMatches(typ, have, want string) (bool, error) {
	switch typ {
	case "TERM_MATCH", "EQUALS":
		return have == want, nil
	case "CONTAINS":
		return strings.Contains(have, want), nil
	case "ANY_OF", "NONE_OF":
		in := false
		for _, v := range strings.Split(want, ",") {
			in = in || strings.TrimSpace(v) == have
		}
		return in == (typ == "ANY_OF"), nil
	}
	return false, fmt.Errorf("filter type %q is not TERM_MATCH, EQUALS, CONTAINS, ANY_OF or NONE_OF", typ)
}
