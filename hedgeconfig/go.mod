module github.com/hedgekit/hedge/hedgeconfig

go 1.26

require github.com/hedgekit/hedge v0.0.0

require go.yaml.in/yaml/v3 v3.0.6

replace github.com/hedgekit/hedge => ../
