package interruption

import (
	"strconv"
	"testing"
	"time"

	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

func TestSentAt(t *testing.T) {
	at := time.Date(2026, 12, 6, 22, 0, 0, 123e6, time.UTC)
	for _, tc := range []struct {
		name  string
		attrs map[string]string
		want  time.Time
		ok    bool
	}{
		{name: "SentTimestamp in milliseconds", attrs: map[string]string{"SentTimestamp": strconv.FormatInt(at.UnixMilli(), 10)}, want: at, ok: true},
		{name: "no attribute", attrs: nil},
		{name: "garbage", attrs: map[string]string{"SentTimestamp": "yesterday"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := sentAt(sqstypes.Message{Attributes: tc.attrs})
			if ok != tc.ok || !got.Equal(tc.want) {
				t.Errorf("sentAt = %v, %v; want %v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}
