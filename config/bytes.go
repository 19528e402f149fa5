package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// byteUnits are the suffixes parseBytes accepts, longest first.
var byteUnits = []struct {
	suffix string
	n      int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
	{"B", 1},
}

// parseBytes reads a size: a non-negative integer of bytes, or a string
// such as "500MB", "1.5 GiB" or "4096".
func parseBytes(v any) (int64, error) {
	switch x := v.(type) {
	case int64:
		if x < 0 {
			return 0, fmt.Errorf("must be 0 or more bytes, not %d", x)
		}
		return x, nil
	case string:
		s := strings.TrimSpace(x)
		mult := int64(1)
		for _, u := range byteUnits {
			if rest, ok := strings.CutSuffix(s, u.suffix); ok {
				s, mult = strings.TrimSpace(rest), u.n
				break
			}
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) || f*float64(mult) > math.MaxInt64/2 {
			return 0, fmt.Errorf("must be a size such as 500MB or 1GiB, not %q", x)
		}
		return int64(f * float64(mult)), nil
	}
	return 0, fmt.Errorf("must be a number of bytes or a size such as \"1GiB\", not %s", typeName(v))
}
