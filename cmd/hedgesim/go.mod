module github.com/hedgekit/hedge/cmd/hedgesim

go 1.26.0

require (
	github.com/hedgekit/hedge v0.0.0
	github.com/hedgekit/hedge/hedgeconfig v0.0.0
)

require go.yaml.in/yaml/v3 v3.0.6 // indirect

replace (
	github.com/hedgekit/hedge => ../../
	github.com/hedgekit/hedge/hedgeconfig => ../../hedgeconfig
	github.com/hedgekit/hedge/hedgegrpc => ../../hedgegrpc
)
