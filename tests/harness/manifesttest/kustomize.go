package manifesttest

import (
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// Kustomize renders a kustomization directory with kustomize (the library
// kubectl embeds) and returns the YAML `kubectl apply -k` would apply. The
// Helm chart's tests compare its renderings with these.
func Kustomize(dir string) ([]byte, error) {
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, err
	}
	return res.AsYaml()
}
