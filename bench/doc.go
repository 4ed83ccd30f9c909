// Package bench compares the cost of hedge.Do with other Go hedging libraries
// (failsafe-go's hedge policy, cristalhq/hedgedhttp). It is a separate module so
// that the core module's go.mod stays free of requirements; it holds only
// benchmarks (see README.md).
package bench
