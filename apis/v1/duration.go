package v1

import (
	"encoding/json"
	"fmt"
	"time"
)

// Never is the value of a NillableDuration that never elapses.
const Never = "Never"

// NillableDuration is a duration that may also be "Never" (Duration == nil).
// It is a string on the wire: "720h", "30s" or "Never".
//
// +kubebuilder:validation:Type=string
type NillableDuration struct {
	Duration *time.Duration `json:"-"`
	// Raw keeps what the user wrote, so a round trip is lossless.
	Raw []byte `json:"-"`
}

// MustParseNillableDuration parses s for tests and defaults; it panics on a bad value.
func MustParseNillableDuration(s string) NillableDuration {
	var d NillableDuration
	if err := d.UnmarshalJSON([]byte(fmt.Sprintf("%q", s))); err != nil {
		panic(err)
	}
	return d
}

// UnmarshalJSON parses "Never" or a Go duration string.
func (d *NillableDuration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string such as \"720h\" or \"Never\": %w", err)
	}
	d.Raw = append([]byte(nil), b...)
	if s == Never || s == "" {
		d.Duration = nil
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("parsing duration %q: %w", s, err)
	}
	d.Duration = &v
	return nil
}

// MarshalJSON writes the duration back as the user wrote it.
func (d NillableDuration) MarshalJSON() ([]byte, error) {
	if d.Raw != nil {
		return d.Raw, nil
	}
	if d.Duration == nil {
		return json.Marshal(Never)
	}
	return json.Marshal(d.Duration.String())
}

// IsZero reports whether the duration was never set, so that it is left out
// of the JSON and the API server's default applies.
func (d NillableDuration) IsZero() bool { return d.Raw == nil && d.Duration == nil }

// IsNever reports whether the duration never elapses.
func (d NillableDuration) IsNever() bool { return d.Duration == nil }

// ToUnstructured lets the apimachinery converters treat the value as a string.
func (d NillableDuration) ToUnstructured() interface{} {
	if d.Raw != nil {
		var s string
		if json.Unmarshal(d.Raw, &s) == nil {
			return s
		}
	}
	if d.Duration == nil {
		return Never
	}
	return d.Duration.String()
}
