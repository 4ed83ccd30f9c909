module github.com/hedgekit/hedge/hedgeload

go 1.26.0

require (
	github.com/hedgekit/hedge v0.0.0
	github.com/hedgekit/hedge/hedgegrpc v0.0.0
	github.com/schollz/progressbar/v3 v3.19.1
	go.uber.org/goleak v1.3.0
	google.golang.org/grpc v1.85.0
	google.golang.org/protobuf v1.36.12
)

require (
	github.com/cncf/xds/go v0.0.0-20260202195803-dba9d589def2 // indirect
	github.com/envoyproxy/protoc-gen-validate v1.3.3 // indirect
	github.com/mitchellh/colorstring v0.0.0-20190213212951-d06e56a500db // indirect
	github.com/rivo/uniseg v0.4.7 // indirect
	golang.org/x/net v0.60.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	golang.org/x/term v0.46.0 // indirect
	golang.org/x/text v0.42.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260817212433-ac3dfec99bb1 // indirect
)

replace github.com/hedgekit/hedge => ../

replace github.com/hedgekit/hedge/hedgegrpc => ../hedgegrpc
