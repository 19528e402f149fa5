module looprig

go 1.26.0

require golang.org/x/sys v0.49.0

require github.com/gofrs/flock v0.13.2

require github.com/google/uuid v1.6.0 // indirect
