module github.com/go-mdraid/mdraid/examples/controller

go 1.26.0

require github.com/go-mdraid/mdraid v0.0.0-00010101000000-000000000000

require (
	github.com/google/renameio/v2 v2.0.2 // indirect
	github.com/google/uuid v1.6.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
)

replace github.com/go-mdraid/mdraid => ../..
