# Spack recipe of Weave (package API v2, Spack >= 1.0; checked with Spack 1.1).
#
#   spack repo add <weave clone>/spack/spack_repo/weave
#   spack install weave dev_path=<weave clone>                  # CPUs: MPI + BLAS + Kokkos
#   spack install weave +cuda cuda_arch=90 dev_path=<clone>     # NVIDIA H100/H200
#   spack test run weave                                        # installed examples on 2 ranks
#
# spack/README.md has the full, tested commands and the variants.

import os

from spack_repo.builtin.build_systems.cmake import CMakePackage
from spack_repo.builtin.build_systems.cuda import CudaPackage

from spack.package import *


class Weave(CMakePackage, CudaPackage):
    """Distributed matrix multiplication with communication overlapped with
    computation: AllGather-GEMM, GEMM-ReduceScatter and GEMM-AllReduce over
    MPI, on CPUs (BLAS) and NVIDIA GPUs (cuBLASLt, NCCL). C API, with C++,
    Fortran and Kokkos interfaces."""

    # Weave has no public release or repository host yet. Until it does, the
    # recipe builds the git clone it lives in (its main branch), so
    # `spack install weave` needs nothing but that clone; dev_path=<clone>
    # builds a work tree as it is. A release adds `url`, `version(...,
    # sha256=...)`, `license(...)` and `maintainers(...)` here.
    git = "file://" + os.path.abspath(join_path(os.path.dirname(__file__), *[os.pardir] * 5))

    version("main", branch="main")

    variant("shared", default=True, description="Build libweave as a shared library")
    variant("fortran", default=True, description="Build the Fortran module (use weave)")
    variant("nccl", default=False, description="NCCL transport between GPUs (needs +cuda)")
    variant("ucx", default=False, description="UCX transport")
    variant(
        "scalapack",
        default=False,
        description="pdgemm-compatible entry points weave_p?gemm (library weave_pblas, needs ScaLAPACK's BLACS)",
    )
    variant("tests", default=False, description="Build the unit and MPI tests (ctest)")
    # One GPU architecture: the CUDA Kokkos that Weave's element-wise
    # kernels run on is built for exactly one (Kokkos' own cuda_arch is
    # single-valued), so a list such as cuda_arch=80,90 cannot concretize.
    variant(
        "cuda_arch",
        description="CUDA architecture (one: Kokkos is built for a single architecture)",
        values=("none",) + CudaPackage.cuda_arch_values,
        default="none",
        multi=False,
        sticky=True,
        when="+cuda",
    )
    # There is no kokkos variant: Weave's element-wise kernels run on Kokkos,
    # so Kokkos is always a dependency. With +cuda it must be a CUDA Kokkos
    # for the same GPU architecture.

    conflicts("+nccl", when="~cuda", msg="the NCCL transport needs the CUDA backend (+cuda)")
    conflicts("+cuda", when="cuda_arch=none", msg="name one GPU architecture, e.g. cuda_arch=90")

    depends_on("c", type="build")
    depends_on("cxx", type="build")
    depends_on("fortran", type="build", when="+fortran")
    depends_on("cmake@3.24:", type="build")
    depends_on("pkgconfig", type="build", when="+ucx")

    depends_on("mpi")
    depends_on("blas")
    depends_on("kokkos@3.4:")
    depends_on("kokkos~cuda", when="~cuda")
    # A CUDA Kokkos built with gcc compiles through nvcc_wrapper (+wrapper);
    # Weave's C++ is then compiled with the same wrapper (cmake_args).
    depends_on("kokkos+cuda+wrapper", when="+cuda %gcc")
    depends_on("kokkos+cuda", when="+cuda")
    for arch in CudaPackage.cuda_arch_values:
        depends_on(f"kokkos cuda_arch={arch}", when=f"+cuda cuda_arch={arch}")
        depends_on(f"nccl cuda_arch={arch}", when=f"+nccl cuda_arch={arch}")
    depends_on("nccl", when="+nccl")
    depends_on("ucx@1.10:", when="+ucx")
    depends_on("scalapack", when="+scalapack")
    depends_on("ucx+cuda", when="+ucx+cuda")
    # GoogleTest for the unit tests: built with +tests, or when Spack is asked
    # to run them (spack install --test=root).
    depends_on("googletest", type=("build", "link"), when="+tests")
    depends_on("googletest", type="test")

    def _build_tests(self):
        return self.spec.satisfies("+tests") or self.run_tests

    def cmake_args(self):
        spec = self.spec
        args = [
            self.define_from_variant("BUILD_SHARED_LIBS", "shared"),
            self.define_from_variant("WEAVE_ENABLE_CUDA", "cuda"),
            self.define_from_variant("WEAVE_ENABLE_NCCL", "nccl"),
            self.define_from_variant("WEAVE_ENABLE_UCX", "ucx"),
            self.define_from_variant("WEAVE_ENABLE_FORTRAN", "fortran"),
            self.define_from_variant("WEAVE_ENABLE_SCALAPACK", "scalapack"),
            self.define("WEAVE_BUILD_TESTS", self._build_tests()),
            # The examples are installed; the stand-alone tests run them.
            self.define("WEAVE_BUILD_EXAMPLES", True),
            # weave-bench needs CLI11 and nlohmann-json, which the recipe
            # does not declare: a benchmark is built from a clone.
            self.define("WEAVE_BUILD_BENCH", False),
            # The MPI and BLAS of this spec, not whatever CMake finds first.
            self.define("MPI_C_COMPILER", spec["mpi"].mpicc),
            self.define("MPI_CXX_COMPILER", spec["mpi"].mpicxx),
            self.define("BLAS_LIBRARIES", spec["blas"].libs.joined(";")),
            self.define("WEAVE_BLAS_ILP64", spec["blas"].satisfies("+ilp64")),
            self.define("Kokkos_ROOT", spec["kokkos"].prefix),
        ]
        if spec.satisfies("+fortran"):
            args.append(self.define("MPI_Fortran_COMPILER", spec["mpi"].mpifc))
        if spec.satisfies("+cuda"):
            args.append(self.define("CMAKE_CUDA_ARCHITECTURES", spec.variants["cuda_arch"].value))
            # A CUDA Kokkos compiles its users' C++ through its compiler
            # (nvcc_wrapper unless Kokkos was built with clang or cmake_lang).
            args.append(self.define("CMAKE_CXX_COMPILER", self["kokkos"].kokkos_cxx))
        if spec.satisfies("+nccl"):
            args.append(self.define("NCCL_HOME", spec["nccl"].prefix))
        if spec.satisfies("+scalapack"):
            args.append(self.define("WEAVE_SCALAPACK_LIBRARIES", spec["scalapack"].libs.joined(";")))
        return args

    # Open MPI refuses to run as root (containers, CI) and to start more ranks
    # than cores unless told; other MPIs ignore these variables. One BLAS
    # thread per rank, since the ranks share the cores.
    _mpi_test_variables = (
        "OMPI_ALLOW_RUN_AS_ROOT",
        "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM",
        "OMPI_MCA_rmaps_base_oversubscribe",
        "OPENBLAS_NUM_THREADS",
    )

    def setup_build_environment(self, env):
        # For the MPI tests of `spack install --test=root`.
        for name in self._mpi_test_variables:
            env.set(name, "1")

    def _mpi_launcher(self):
        return which("mpiexec", "mpirun", path=[self.spec["mpi"].prefix.bin]) or which(
            "srun", "mpiexec", "mpirun", required=True
        )

    def _run_example(self, name):
        example = join_path(self.prefix.libexec.weave.examples, name)
        # Stand-alone tests do not run in the build environment: set the
        # variables of setup_build_environment for the launcher here.
        saved = {k: os.environ.get(k) for k in self._mpi_test_variables}
        os.environ.update({k: "1" for k in self._mpi_test_variables})
        try:
            # Two ranks: the shards are uneven and one rank in three owns no
            # tokens, so two ranks already exercise the exchange.
            output = self._mpi_launcher()("-n", "2", example, output=str, error=str)
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        assert "PASS" in output, f"{name} did not pass:\n{output}"

    def test_example_c(self):
        """run the installed C example (AG-GEMM, activation, GEMM-RS) on 2 MPI ranks"""
        self._run_example("weave_example_mlp_c")

    def test_example_fortran(self):
        """run the installed Fortran example on 2 MPI ranks"""
        if not self.spec.satisfies("+fortran"):
            raise SkipTest("Weave was built without the Fortran module (~fortran)")
        self._run_example("weave_example_mlp_fortran")
