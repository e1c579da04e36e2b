// Package pricing keeps the AWS provider's catalog live: three singletons
// (operator.Singleton), each one refresh per step on its own timer —
// spot prices (DescribeSpotPriceHistory, every 5 minutes by default),
// on-demand prices (the Pricing API's GetProducts, every 12 hours) and
// offerings per zone (DescribeInstanceTypeOfferings and DescribeInstanceTypes,
// every 12 hours). Until the Pricing API first answers, on-demand offerings
// are priced from the embedded snapshot; the on-demand singleton then
// publishes a Warning Event on every EC2NodeClass and sets
// nodesmith_catalog_on_demand_prices_from_snapshot, so the fallback is
// visible. nodesmith_catalog_last_refresh_timestamp_seconds says when each
// part was last read.
//
// Time comes from the injected clock. The package calls the provider
// through the narrow Refresher interface; it must not import the AWS SDK.
package pricing
