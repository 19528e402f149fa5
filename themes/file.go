package themes

import (
	"fmt"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"

	"looprig/internal/tomlscan"
)

// fileTheme is the decoded form of a theme file.
type fileTheme struct {
	Name   string
	Base   string
	Dark   *bool
	Colors map[string]Color
}

func parseTOML(data []byte) (fileTheme, error) {
	// The decoder's cost is quadratic in nesting and dotted keys: bound
	// them first.
	if err := tomlscan.Check(data, tomlscan.Default); err != nil {
		return fileTheme{}, err
	}
	var raw struct {
		Name   string         `toml:"name"`
		Base   string         `toml:"base"`
		Dark   *bool          `toml:"dark"`
		Colors map[string]any `toml:"colors"`
	}
	md, err := toml.Decode(string(data), &raw)
	if err != nil {
		return fileTheme{}, err
	}
	if und := md.Undecoded(); len(und) > 0 {
		var keys []string
		for _, k := range und {
			if len(k) >= 1 && k[0] == "colors" {
				continue // colour values are checked below
			}
			keys = append(keys, k.String())
		}
		if len(keys) > 0 {
			return fileTheme{}, fmt.Errorf("unknown keys: %s", strings.Join(keys, ", "))
		}
	}
	f := fileTheme{Name: raw.Name, Base: raw.Base, Dark: raw.Dark, Colors: map[string]Color{}}
	names := make([]string, 0, len(raw.Colors))
	for k := range raw.Colors {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		c, err := colorValue(raw.Colors[k])
		if err != nil {
			return fileTheme{}, fmt.Errorf("colors.%s: %w", k, err)
		}
		f.Colors[k] = c
	}
	return f, nil
}

// colorValue accepts { truecolor = "#..", ansi256 = "..", ansi16 = ".." }
// (numbers allowed for the indexes) or the short string "#rrggbb 256 16".
func colorValue(v any) (Color, error) {
	switch v := v.(type) {
	case string:
		parts := strings.Fields(v)
		if len(parts) != 3 {
			return Color{}, fmt.Errorf("want \"#rrggbb N256 N16\", got %q", v)
		}
		return Color{TrueColor: parts[0], ANSI256: parts[1], ANSI16: parts[2]}, nil
	case map[string]any:
		var c Color
		for k, x := range v {
			s, err := scalar(x)
			if err != nil {
				return Color{}, fmt.Errorf("%s: %w", k, err)
			}
			switch k {
			case "truecolor":
				c.TrueColor = s
			case "ansi256":
				c.ANSI256 = s
			case "ansi16":
				c.ANSI16 = s
			default:
				return Color{}, fmt.Errorf("unknown key %q (want truecolor, ansi256, ansi16)", k)
			}
		}
		return c, nil
	}
	return Color{}, fmt.Errorf("want a table or a string, got %T", v)
}

func scalar(x any) (string, error) {
	switch x := x.(type) {
	case string:
		return x, nil
	case int64:
		return fmt.Sprint(x), nil
	}
	return "", fmt.Errorf("want a string or an integer, got %T", x)
}
