# Spack recipe of Weave (package API v2, Spack >= 1.0).
#
#   spack repo add <weave clone>/spack/spack_repo/weave
#   spack install weave                           # CPUs: BLAS + MPI
#   spack install weave +cuda cuda_arch=90 +nccl  # NVIDIA GPUs
#   spack test run weave                          # the installed example on 2 ranks
#
# See spack/README.md and doc/user-guide.md for the variants.

from spack_repo.builtin.build_systems.cmake import CMakePackage
from spack_repo.builtin.build_systems.cuda import CudaPackage

from spack.package import *


class Weave(CMakePackage, CudaPackage):
    """Distributed matrix multiplication with communication overlapped with
    computation: AllGather-GEMM, GEMM-ReduceScatter and GEMM-AllReduce over
    MPI, on CPUs (BLAS) and NVIDIA GPUs (cuBLASLt, NCCL). C API, with C++ and
    Fortran interfaces."""

    # Placeholders: Weave has no public release yet. Point these at the
    # project's repository, or build a local clone with
    #   spack develop --path <weave clone> weave@main && spack install weave@main
    homepage = "https://example.org/weave"
    git = "https://example.org/weave/weave.git"

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
    # There is no kokkos variant: Weave's host kernels run on Kokkos, so
    # Kokkos is always a dependency. With +cuda it must be a CUDA Kokkos for
    # the same GPU architectures.

    conflicts("+nccl", when="~cuda", msg="the NCCL transport needs the CUDA backend (+cuda)")
    conflicts("+cuda", when="cuda_arch=none", msg="name the GPU architecture, e.g. cuda_arch=90")

    depends_on("c", type="build")
    depends_on("cxx", type="build")
    depends_on("fortran", type="build", when="+fortran")
    depends_on("cmake@3.24:", type="build")
    depends_on("pkgconfig", type="build", when="+ucx")

    depends_on("mpi")
    depends_on("blas")
    depends_on("kokkos@3.4:")
    for arch in CudaPackage.cuda_arch_values:
        depends_on(f"kokkos+cuda cuda_arch={arch}", when=f"+cuda cuda_arch={arch}")
        depends_on(f"nccl cuda_arch={arch}", when=f"+nccl cuda_arch={arch}")
    depends_on("nccl", when="+nccl")
    depends_on("ucx@1.10:", when="+ucx")
    depends_on("scalapack", when="+scalapack")
    depends_on("ucx+cuda", when="+ucx+cuda")
    # The unit tests are built (not only run) with +tests.
    depends_on("googletest", type=("build", "link"), when="+tests")

    def cmake_args(self):
        spec = self.spec
        args = [
            self.define_from_variant("BUILD_SHARED_LIBS", "shared"),
            self.define_from_variant("WEAVE_ENABLE_CUDA", "cuda"),
            self.define_from_variant("WEAVE_ENABLE_NCCL", "nccl"),
            self.define_from_variant("WEAVE_ENABLE_UCX", "ucx"),
            self.define_from_variant("WEAVE_ENABLE_FORTRAN", "fortran"),
            self.define_from_variant("WEAVE_ENABLE_SCALAPACK", "scalapack"),
            self.define_from_variant("WEAVE_BUILD_TESTS", "tests"),
            # The examples are installed; the stand-alone test runs one.
            self.define("WEAVE_BUILD_EXAMPLES", True),
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

    def _mpi_launcher(self):
        return which("mpiexec", "mpirun", path=[self.spec["mpi"].prefix.bin]) or which(
            "srun", "mpiexec", "mpirun", required=True
        )

    def _run_example(self, name):
        example = join_path(self.prefix.libexec.weave.examples, name)
        # Two ranks: the shards are uneven and one rank in three owns no
        # tokens, so two ranks already exercise the exchange.
        output = self._mpi_launcher()("-n", "2", example, output=str, error=str)
        assert "PASS" in output, f"{name} did not pass:\n{output}"

    def test_example_c(self):
        """run the installed C example (AG-GEMM, activation, GEMM-RS) on 2 MPI ranks"""
        self._run_example("weave_example_mlp_c")

    def test_example_fortran(self):
        """run the installed Fortran example on 2 MPI ranks"""
        if not self.spec.satisfies("+fortran"):
            raise SkipTest("Weave was built without the Fortran module (~fortran)")
        self._run_example("weave_example_mlp_fortran")
