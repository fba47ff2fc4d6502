package cli

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"
)

// PasswordEnv holds the password of encrypted documents when neither
// --password nor --password-file is given (a flag shows in the process
// list; the environment and a file do not).
const PasswordEnv = "EXTRACTQ_DOCUMENT_PASSWORD"

// PasswordFlags are --password and --password-file, the password of
// encrypted documents, the same in every command that reads them
// (`extract`, `submit`, `submit resubmit`, `extractq dlq resubmit`). The
// password is only ever handed to the document reader: no log, job,
// audit row or dead letter holds it.
type PasswordFlags struct {
	Password     string
	PasswordFile string
}

// Register defines the two flags; what says which documents they open.
func (f *PasswordFlags) Register(fl *pflag.FlagSet, what string) {
	fl.StringVar(&f.Password, "password", "", "password of "+what+" (default $"+PasswordEnv+"; --password-file keeps it out of the process list)")
	fl.StringVar(&f.PasswordFile, "password-file", "", "`FILE` whose first line is the password of "+what+" (instead of --password)")
}

// Value is the password the flags give: --password, else the first line
// of --password-file (its line ending dropped, any other space kept),
// else $EXTRACTQ_DOCUMENT_PASSWORD (getenv; nil reads none); "" for none.
// Both flags, or a file that cannot be read or holds no password, are a
// usage error naming the file, never its content.
func (f *PasswordFlags) Value(getenv func(string) string) (string, error) {
	switch {
	case f.Password != "" && f.PasswordFile != "":
		return "", Usage(errors.New("give --password or --password-file, not both"))
	case f.Password != "":
		return f.Password, nil
	case f.PasswordFile != "":
		b, err := os.ReadFile(f.PasswordFile)
		if err != nil {
			return "", Usage(fmt.Errorf("--password-file: %w", err))
		}
		line, _, _ := strings.Cut(string(b), "\n")
		if line = strings.TrimSuffix(line, "\r"); line == "" {
			return "", Usage(fmt.Errorf("--password-file %s: its first line is empty: write the password on it", f.PasswordFile))
		}
		return line, nil
	case getenv != nil:
		return getenv(PasswordEnv), nil
	}
	return "", nil
}
