// Package events gives every Event Nodesmith emits a typed constructor, so
// reasons are spelled once, and de-duplicates them: the same reason and
// message on the same object within a few minutes is sent once, because a
// pod that cannot be placed is re-evaluated every batch.
//
// It may import client-go's events API; it holds no decision logic.
package events
