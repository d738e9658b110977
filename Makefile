# uiwarp: `make demo` and `make check` are the two commands of the README.
BUILD ?= build
JOBS  ?= $(shell nproc)
PREFIX ?= /usr/local
CMAKE_FLAGS ?=

.PHONY: all deps build check demo install clean

all: build

deps:
	@bash scripts/install-deps.sh

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_INSTALL_PREFIX=$(PREFIX) $(CMAKE_FLAGS)

build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

check: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

demo: build
	@bash scripts/demo.sh $(BUILD)

install: build
	cmake --install $(BUILD)
	-ldconfig

clean:
	rm -rf $(BUILD)

# libFuzzer targets of tests/fuzz/ (clang), FUZZ_SECONDS each; build in
# build-fuzz/, runs and findings in build-fuzz/run/.
FUZZ_SECONDS ?= 60
.PHONY: fuzz
fuzz: deps
	@bash scripts/fuzz.sh $(FUZZ_SECONDS)
