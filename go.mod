module github.com/hedgekit/hedge

go 1.26
