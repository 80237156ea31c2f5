package gitserver_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestGitServer(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Git server harness")
}
