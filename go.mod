module github.com/go-mdraid/mdraid

go 1.26.0

require (
	github.com/alecthomas/kong v1.17.0 // indirect
	github.com/cavaliergopher/cpio v1.0.1 // indirect
	github.com/dsnet/golib v0.0.0-20171103203638-1ea166775780 // indirect
	github.com/frankban/quicktest v1.14.6 // indirect
	github.com/google/go-cmp v0.5.9 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/kr/pretty v0.3.1 // indirect
	github.com/kr/text v0.2.0 // indirect
	github.com/rogpeppe/go-internal v1.9.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
)
