package v1

import "strings"

// DisruptionReplacements returns the replacement NodeClaims the disruption
// command over this claim waits for (AnnotationDisruptionReplacements), in
// the order the command launched them; nil when the claim is in no command
// or its command launches nothing.
func (c *NodeClaim) DisruptionReplacements() []string {
	v := c.Annotations[AnnotationDisruptionReplacements]
	if v == "" {
		return nil
	}
	return strings.Split(v, ",")
}

// SetDisruptionReplacements records the replacements a disruption command
// over this claim waits for; DisruptionReplacements reads them back.
func (c *NodeClaim) SetDisruptionReplacements(names []string) {
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Annotations[AnnotationDisruptionReplacements] = strings.Join(names, ",")
}
