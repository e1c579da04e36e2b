package aws

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// hashJSON is a stable short hash of v's JSON form (maps marshal sorted).
func hashJSON(v any) string {
	b, _ := json.Marshal(v)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12])
}
