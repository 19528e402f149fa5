module looprig

go 1.26
