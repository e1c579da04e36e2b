// Package fake is an in-memory CloudProvider for controller tests: it records
// every call, keeps the instances it "launched", and returns errors the test
// injects (insufficient capacity, node class not ready, anything else), so a
// test can drive each lifecycle phase against a real API server (envtest)
// without a cloud.
//
// It imports the cloudprovider contract and the API types only.
package fake
