# The two commands a newcomer needs:
#   make demo   build veil and run its main job on an all-in-one local deployment
#   make test   install missing test dependencies, then run the whole test suite
.PHONY: build demo test bench fuzz

build:
	go build -o bin/veil ./cmd/veil

demo: build
	bash scripts/demo

test:
	bash scripts/test

bench: build
	./bin/veil bench mle
