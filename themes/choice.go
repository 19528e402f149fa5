package themes

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"looprig/internal/atomicfile"
	"looprig/internal/smallfile"
)

// choiceFile is the file in the config directory that remembers the theme.
const choiceFile = "theme"

// maxChoiceFile bounds it: a theme name and a newline.
const maxChoiceFile = 4 << 10

// LoadChoice returns the persisted theme name ("" when none was saved).
func LoadChoice(configDir string) (string, error) {
	if configDir == "" {
		return "", nil
	}
	// Read as the configuration file is: a regular file, bounded, never
	// blocking on a FIFO or a device.
	b, err := smallfile.Read(filepath.Join(configDir, choiceFile), maxChoiceFile)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", nil
		}
		return "", fmt.Errorf("theme choice: %w", err)
	}
	name := strings.TrimSpace(string(b))
	if len(name) > 64 || !nameRe.MatchString(name) {
		return "", fmt.Errorf("theme choice in %s is not a theme name", filepath.Join(configDir, choiceFile))
	}
	return name, nil
}

// SaveChoice persists name in configDir (created 0700 if needed), atomically.
func SaveChoice(configDir, name string) error {
	if configDir == "" {
		return nil
	}
	if !nameRe.MatchString(name) {
		return fmt.Errorf("not a theme name: %q", name)
	}
	if err := os.MkdirAll(configDir, 0o700); err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(configDir, choiceFile), []byte(name+"\n"))
}
