package themes

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"looprig/internal/smallfile"
)

// Dir is the directory of user theme files inside a config directory.
func Dir(configDir string) string { return filepath.Join(configDir, "themes") }

// maxThemeFile bounds a theme file; a real one is a few KiB.
const maxThemeFile = 256 << 10

// LoadDir loads every *.toml file in dir as a theme. A missing directory is
// no themes and no error. A file that does not load is skipped and its
// error returned among errs (named by path), so one bad file never hides
// the others or the built-ins.
func LoadDir(dir string) (themes []Theme, errs []error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, []error{fmt.Errorf("themes: %w", err)}
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".toml") {
			continue
		}
		p := filepath.Join(dir, e.Name())
		t, err := LoadFile(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		themes = append(themes, t)
	}
	sort.Slice(themes, func(i, j int) bool { return themes[i].Name < themes[j].Name })
	return themes, errs
}

// LoadFile loads one theme file. The theme is named by the file ("ocean.toml"
// is "ocean") unless it sets name. Its format:
//
//	name = "ocean"        # optional
//	base = "dark"         # optional: start from a built-in, override some tokens
//	dark = true           # optional; default: the base's, else true
//
//	[colors]
//	accent = { truecolor = "#5fafff", ansi256 = "75", ansi16 = "12" }
//	text   = "#d0d0d0 252 7"   # short form: truecolor, 256, 16
//
// The file is read as the configuration file is: a regular file of at most
// 256 KiB (a FIFO or a device is refused without blocking on it), whose
// shape is bounded before it is decoded (see internal/tomlscan).
func LoadFile(path string) (Theme, error) {
	b, err := smallfile.Read(path, maxThemeFile)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the path is said once, below
		}
		return Theme{}, fmt.Errorf("theme %s: %w", path, err)
	}
	name := strings.TrimSuffix(filepath.Base(path), ".toml")
	t, err := Parse(name, b)
	if err != nil {
		return Theme{}, fmt.Errorf("theme %s: %w", path, err) // a *tomlscan.ShapeError says "line N: ..."
	}
	t.Source = path
	return t, nil
}

// Parse parses a theme file's content; name is used when the file sets none.
func Parse(name string, data []byte) (Theme, error) {
	f, err := parseTOML(data)
	if err != nil {
		return Theme{}, err
	}
	if f.Name != "" {
		name = f.Name
	}
	t := Theme{Name: name, Dark: true, Colors: map[Token]Color{}}
	if f.Base != "" {
		base, err := Lookup(f.Base)
		if err != nil {
			return Theme{}, fmt.Errorf("base: %w", err)
		}
		t.Dark = base.Dark
		for k, v := range base.Colors {
			t.Colors[k] = v
		}
	}
	if f.Dark != nil {
		t.Dark = *f.Dark
	}
	for k, v := range f.Colors {
		t.Colors[Token(k)] = v
	}
	if err := t.Validate(); err != nil {
		return Theme{}, err
	}
	return t, nil
}
