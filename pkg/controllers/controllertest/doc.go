// Package controllertest is the controllers' test support: a manager-backed
// cache with the field indexes the controllers use, started against the
// envtest apiserver of test/testenv, plus small object builders and a
// polling helper for reading one's writes back through the cache.
//
// Test support only; production code must not import it.
package controllertest
