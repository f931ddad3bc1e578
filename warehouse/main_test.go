package warehouse

import (
	"testing"

	"github.com/sluice-data/sluice/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }
