package agenttest

import (
	"os"
	"strings"
	"testing"
)

// .ci/run installs the version the tests name.
func TestCIInstallsThePinnedVersion(t *testing.T) {
	b, err := os.ReadFile("../../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "CLAUDE_VERSION="+PinnedVersion+" ") {
		t.Errorf(".ci/run does not install Claude Code %s (PinnedVersion)", PinnedVersion)
	}
	if !strings.Contains(string(b), "CODEX_VERSION="+CodexPinnedVersion+" ") {
		t.Errorf(".ci/run does not install Codex %s (CodexPinnedVersion)", CodexPinnedVersion)
	}
}
