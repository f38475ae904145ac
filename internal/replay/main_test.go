package replay

import (
	"io"
	"log"
	"os"
	"testing"
)

// TestMain quiets the 0.8 SDK, which logs through the standard logger.
func TestMain(m *testing.M) {
	log.SetOutput(io.Discard)
	os.Exit(m.Run())
}
