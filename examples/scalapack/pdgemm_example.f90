! A small ScaLAPACK program: C = 2 A B^T - C on a 2-D BLACS grid of all
! processes, A (37 x 23), B (29 x 23) and C (37 x 29) in 4 x 4 blocks.
! It prints a checksum of C and three of its elements. Built twice: as
! written, with ScaLAPACK's PDGEMM, and with that one name changed to
! WEAVE_PDGEMM (the build does the renaming); the two must print the same
! (integer-valued data, so every summation order gives the same bits).
program pdgemm_example
  implicit none
  integer, parameter :: m = 37, n = 29, k = 23, mb = 4, nb = 4
  integer :: iam, nprocs, ictxt, nprow, npcol, myrow, mycol, info
  integer :: desca(9), descb(9), descc(9)
  integer :: lra, lca, lrb, lcb, lrc, lcc, i, j
  double precision, allocatable :: a(:, :), b(:, :), c(:, :)
  double precision :: checksum, c11, cmn, c57
  integer, external :: numroc, indxl2g

  call blacs_pinfo(iam, nprocs)
  nprow = int(sqrt(real(nprocs)))
  do while (mod(nprocs, nprow) /= 0)
    nprow = nprow - 1
  end do
  npcol = nprocs / nprow
  call blacs_get(-1, 0, ictxt)
  call blacs_gridinit(ictxt, 'Row-major', nprow, npcol)
  call blacs_gridinfo(ictxt, nprow, npcol, myrow, mycol)

  lra = numroc(m, mb, myrow, 0, nprow)
  lca = numroc(k, nb, mycol, 0, npcol)
  lrb = numroc(n, mb, myrow, 0, nprow)
  lcb = numroc(k, nb, mycol, 0, npcol)
  lrc = numroc(m, mb, myrow, 0, nprow)
  lcc = numroc(n, nb, mycol, 0, npcol)
  call descinit(desca, m, k, mb, nb, 0, 0, ictxt, max(1, lra), info)
  call descinit(descb, n, k, mb, nb, 0, 0, ictxt, max(1, lrb), info)
  call descinit(descc, m, n, mb, nb, 0, 0, ictxt, max(1, lrc), info)
  allocate (a(max(1, lra), max(1, lca)), b(max(1, lrb), max(1, lcb)), c(max(1, lrc), max(1, lcc)))

  do j = 1, lca
    do i = 1, lra
      a(i, j) = mod(indxl2g(i, mb, myrow, 0, nprow) + 2 * indxl2g(j, nb, mycol, 0, npcol), 7) - 3
    end do
  end do
  do j = 1, lcb
    do i = 1, lrb
      b(i, j) = mod(3 * indxl2g(i, mb, myrow, 0, nprow) + indxl2g(j, nb, mycol, 0, npcol), 5) - 2
    end do
  end do
  do j = 1, lcc
    do i = 1, lrc
      c(i, j) = mod(indxl2g(i, mb, myrow, 0, nprow) * indxl2g(j, nb, mycol, 0, npcol), 3)
    end do
  end do

  CALL PDGEMM('N', 'T', m, n, k, 2.0d0, a, 1, 1, desca, b, 1, 1, descb, -1.0d0, c, 1, 1, descc)

  checksum = 0
  do j = 1, lcc
    do i = 1, lrc
      checksum = checksum + c(i, j) * (indxl2g(i, mb, myrow, 0, nprow) + 3 * indxl2g(j, nb, mycol, 0, npcol))
    end do
  end do
  call dgsum2d(ictxt, 'All', ' ', 1, 1, checksum, 1, 0, 0)
  call pdelget('All', ' ', c11, c, 1, 1, descc)
  call pdelget('All', ' ', cmn, c, m, n, descc)
  call pdelget('All', ' ', c57, c, 5, 7, descc)
  if (myrow == 0 .and. mycol == 0) then
    write (*, '(a, i0, a, i0, a)') 'C = 2 A B^T - C on a ', nprow, ' x ', npcol, ' grid'
    write (*, '(a, f16.1)') 'checksum ', checksum
    write (*, '(a, 3f10.1)') 'C(1,1), C(37,29), C(5,7): ', c11, cmn, c57
  end if
  call blacs_gridexit(ictxt)
  call blacs_exit(0)
end program pdgemm_example
