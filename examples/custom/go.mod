// A user's own module: it plugs a provider and a validator into extractq
// through the public API only (no internal package), and tests its
// extraction code with the public test kit. CI runs its tests.
module example.com/custom

go 1.26.8

require (
	github.com/extractq/extractq v0.0.0
	golang.org/x/sync v0.24.0
)

require (
	github.com/bahlo/generic-list-go v0.2.0 // indirect
	github.com/buger/jsonparser v1.1.2 // indirect
	github.com/dlclark/regexp2 v1.11.0 // indirect
	github.com/goccy/go-yaml v1.19.2 // indirect
	github.com/invopop/jsonschema v0.14.0 // indirect
	github.com/pb33f/ordered-map/v2 v2.3.1 // indirect
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3 // indirect
	go.yaml.in/yaml/v4 v4.0.0-rc.2 // indirect
	golang.org/x/text v0.43.0 // indirect
)

replace github.com/extractq/extractq => ../..
