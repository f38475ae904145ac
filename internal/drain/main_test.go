package drain_test

import (
	"io"
	"log"
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	// The Iggy SDK chats through the standard logger on every login.
	log.SetOutput(io.Discard)
	os.Exit(m.Run())
}
