package app

import (
	"io"
	"log"
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	log.SetOutput(io.Discard) // the Iggy SDK's login chatter
	os.Exit(m.Run())
}
