module github.com/hedgekit/hedge/bench

go 1.26

require (
	github.com/cristalhq/hedgedhttp v0.9.2
	github.com/failsafe-go/failsafe-go v0.9.8
	github.com/hedgekit/hedge v0.0.0
)

require github.com/bits-and-blooms/bitset v1.24.4 // indirect

replace github.com/hedgekit/hedge => ../
