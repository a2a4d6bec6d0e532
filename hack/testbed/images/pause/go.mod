module github.com/kruise-rs/kruise-rs/hack/testbed/images/pause

go 1.26.0
